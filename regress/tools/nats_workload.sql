-- regress/tools/nats_workload.sql: the NATS tests' source workload (test/t/3*_nats_*.pl,
-- RpTest::Nats::load_workload; psql -v slot=NAME).
--
-- Three tables, two of them with hostile identifiers (dots, spaces, '*', '>', '%', quotes,
-- non-ASCII: each must become one escaped subject token) and hostile values (quotes,
-- backslashes, newlines, control characters, non-ASCII, long text). Every committed change is
-- recorded in audit, in the same transaction, as (txid, "schema.table", id, op, ver): what
-- regress/check_nats.py compares the stream with. Rows of rolled-back work carry negative ids.
-- CALL workload(w, big, n): n transactions (0: until ctl.stop) of worker w; big: 500-1500 row
-- transactions, else 1-5 small statements. It waits while the slot :slot is more than 16 MB of
-- WAL behind, so a restart re-reads little whatever the machine's pace.
CREATE SCHEMA "we.ird *>%";
CREATE SCHEMA "Ünï cödé";
CREATE TABLE public.t_a (id bigint PRIMARY KEY, ver int NOT NULL, name text, amount numeric(12,2),
                         ts timestamptz, flag bool);
CREATE TABLE "we.ird *>%"."tâble.x>y*" (id bigint PRIMARY KEY, ver int NOT NULL,
                         "col ""q"" ." text, doc jsonb, raw bytea);
CREATE TABLE "Ünï cödé"."sp ace" (id bigint PRIMARY KEY, ver int NOT NULL, u uuid, f float8,
                         tags text[], "€" text);
CREATE TABLE audit (seq bigserial PRIMARY KEY, txid bigint NOT NULL, tbl text NOT NULL,
                    id bigint NOT NULL, op char(1) NOT NULL, ver int NOT NULL);
CREATE TABLE ctl (stop bool NOT NULL);
INSERT INTO ctl VALUES (false);
CREATE TABLE fence (at timestamptz);
-- the slot whose lag throttles the workload; the pause after each small transaction
CREATE TABLE wl_conf (slot text NOT NULL, pace float8 NOT NULL DEFAULT 0.005);
INSERT INTO wl_conf VALUES (:'slot');
CREATE TABLE bulk (id bigint PRIMARY KEY, v text);

CREATE FUNCTION wl_tbl(t int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT (ARRAY['public.t_a', '"we.ird *>%"."tâble.x>y*"', '"Ünï cödé"."sp ace"'])[t] $$;
-- the name the audit records: schema.table, unquoted (as Replicant-Table says it)
CREATE FUNCTION wl_name(t int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT (ARRAY['public.t_a', 'we.ird *>%.tâble.x>y*', 'Ünï cödé.sp ace'])[t] $$;
-- a hostile text value built from g (no NUL: text cannot hold one)
CREATE FUNCTION wl_text(g bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $$
	SELECT 'q"uote\back' || E'\n' || 'line' || E'\t' || chr(1) || chr(31) || ' ünï €🙂 '
	       || g::text || CASE WHEN g % 7 = 0 THEN repeat('x', 3000) ELSE '' END $$;

CREATE FUNCTION wl_insert(t int, first bigint, n int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	cols text := CASE t
		WHEN 1 THEN 'name, amount, ts, flag'
		WHEN 2 THEN '"col ""q"" .", doc, raw'
		ELSE 'u, f, tags, "€"' END;
	vals text := CASE t
		WHEN 1 THEN 'wl_text(g), round((random() * 10000)::numeric, 2), now(), random() > 0.5'
		WHEN 2 THEN 'wl_text(g), jsonb_build_object(''k"\'', wl_text(g), ''n'', g), decode(md5(g::text), ''hex'') || ''\x00ff''::bytea'
		ELSE 'gen_random_uuid(), random(), ARRAY[wl_text(g), NULL, ''}{,"'']::text[], wl_text(g)' END;
BEGIN
	EXECUTE format('WITH i AS (INSERT INTO %s (id, ver, %s) SELECT g, 0, %s FROM generate_series($1, $1 + $2 - 1) g RETURNING id, ver)
	                INSERT INTO audit (txid, tbl, id, op, ver) SELECT txid_current(), %L, id, ''I'', ver FROM i',
	               wl_tbl(t), cols, vals, wl_name(t)) USING first, n;
END $$;

CREATE FUNCTION wl_update(t int, lo bigint, hi bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	sets text := CASE t
		WHEN 1 THEN 'name = name || ''!'', amount = amount + 1'
		WHEN 2 THEN 'doc = doc || jsonb_build_object(''v'', ver + 1)'
		ELSE 'f = random(), "€" = "€" || ''\''' END;
BEGIN
	EXECUTE format('WITH u AS (UPDATE %s SET ver = ver + 1, %s WHERE id BETWEEN $1 AND $2 RETURNING id, ver)
	                INSERT INTO audit (txid, tbl, id, op, ver) SELECT txid_current(), %L, id, ''U'', ver FROM u',
	               wl_tbl(t), sets, wl_name(t)) USING lo, hi;
END $$;

CREATE FUNCTION wl_delete(t int, lo bigint, hi bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('WITH d AS (DELETE FROM %s WHERE id BETWEEN $1 AND $2 RETURNING id, ver)
	                INSERT INTO audit (txid, tbl, id, op, ver) SELECT txid_current(), %L, id, ''D'', ver FROM d',
	               wl_tbl(t), wl_name(t)) USING lo, hi;
END $$;

-- Worker w's ids in table t: w * 10^12 + a sequence of its own (not transactional: a restarted
-- worker never hands out an id twice).
CREATE SEQUENCE ids_1_1; CREATE SEQUENCE ids_1_2; CREATE SEQUENCE ids_1_3;
CREATE SEQUENCE ids_2_1; CREATE SEQUENCE ids_2_2; CREATE SEQUENCE ids_2_3;
CREATE FUNCTION wl_take(w int, t int, n int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	first bigint := nextval(format('ids_%s_%s', w, t));
BEGIN
	PERFORM setval(format('ids_%s_%s', w, t), first + n - 1);
	RETURN w * 1000000000000 + first;
END $$;
CREATE FUNCTION wl_high(w int, t int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	high bigint;
BEGIN
	EXECUTE format('SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ids_%s_%s', w, t) INTO high;
	RETURN w * 1000000000000 + high;
END $$;

CREATE PROCEDURE workload(w int, big bool, n_txns int) LANGUAGE plpgsql AS $$
DECLARE
	base bigint := w * 1000000000000;
	ghost bigint := 1;
	done int := 0;
	first bigint;
	high bigint;
	t int;
	n int;
	k int;
	x bigint;
	r float8;
BEGIN
	LOOP
		EXIT WHEN (SELECT stop FROM ctl) OR (n_txns > 0 AND done >= n_txns);
		WHILE (SELECT pg_current_wal_lsn() - confirmed_flush_lsn > 16 * 1024 * 1024
		         FROM pg_replication_slots WHERE slot_name = (SELECT slot FROM wl_conf)) AND NOT (SELECT stop FROM ctl) LOOP
			PERFORM pg_sleep(0.05);
			COMMIT;
		END LOOP;
		r := random();
		IF NOT big THEN
			FOR s IN 1 .. 1 + (random() * 4)::int LOOP
				t := 1 + (random() * 2.99)::int % 3;
				high := wl_high(w, t);
				x := base + 1 + (random() * (high - base - 1))::bigint;
				k := (random() * 9)::int;
				IF k <= 4 OR high - base < 10 THEN
					n := 1 + (random() * 5)::int;
					PERFORM wl_insert(t, wl_take(w, t, n), n);
				ELSIF k <= 7 THEN
					PERFORM wl_update(t, x, x + (random() * 3)::int);
				ELSE
					PERFORM wl_delete(t, x, x);
				END IF;
			END LOOP;
			IF r < 0.1 THEN
				BEGIN
					PERFORM wl_insert(t, -(base + ghost), 3);
					ghost := ghost + 3;
					RAISE EXCEPTION 'roll back the subtransaction';
				EXCEPTION WHEN raise_exception THEN NULL;
				END;
			END IF;
			IF r > 0.95 THEN
				PERFORM wl_insert(t, -(base + ghost), 2);
				ghost := ghost + 2;
				ROLLBACK;
			ELSE
				COMMIT;
			END IF;
			PERFORM pg_sleep((SELECT pace FROM wl_conf));
		ELSE
			t := 1 + (random() * 2.99)::int % 3;
			n := 500 + (random() * 1000)::int;
			first := wl_take(w, t, n);
			PERFORM wl_insert(t, first, n);
			PERFORM wl_update(t, first, first + 100);
			IF r > 0.9 THEN
				PERFORM wl_insert(t, -(base + ghost), 500);
				ghost := ghost + 500;
				ROLLBACK;
			ELSE
				COMMIT;
			END IF;
			PERFORM pg_sleep(0.3);
		END IF;
		done := done + 1;
	END LOOP;
END $$;
