-- bench_caught_up(SLOT, TARGET): true once SLOT's confirmed_flush_lsn reaches TARGET; looks
-- every 10 ms for up to 0.5 s, from inside the server (a psql per look would take CPU from the
-- catch-up being measured). Loaded by bench/mirror.sh and bench/mirror_tables.sh.
CREATE FUNCTION public.bench_caught_up(slot text, target pg_lsn) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	ok bool;
BEGIN
	LOOP
		SELECT coalesce(confirmed_flush_lsn >= target, false) INTO ok
		  FROM pg_replication_slots WHERE slot_name = slot;
		IF coalesce(ok, false) OR clock_timestamp() - t0 > interval '0.5 s' THEN
			RETURN coalesce(ok, false);
		END IF;
		PERFORM pg_sleep(0.01);
	END LOOP;
END $$;
