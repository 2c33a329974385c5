# replicant: top-level build (PGXS).
#   make                 the output plugin and extension, the consumer program; needs only
#                        PGXS and libpq (the metrics endpoint when libmicrohttpd is there)
#   make install         installs the plugin, the extension files and the consumer
#   make installcheck    pg_regress suite on a temporary instance (see regress/logical.conf)
#   make unitcheck       builds and runs the Check unit tests (needs Check); one suite or a
#                        few: make unitcheck SUITES="asm store" (consumer/tests/ct_main.c);
#                        then checks the layout (tools/pgindent/pgindent.sh --check; needs
#                        pg_bsd_indent: sh tools/pgindent/pgindent.sh lays the files out)
#   make unitcheck SAN=asan (or SAN=tsan)
#                        the same built with the sanitizers, in consumer/obj-$(SAN)/
#                        (see consumer/Makefile); the plugin is never built with them
#   make dist            replicant-VERSION.zip for PGXN: the committed tree at HEAD (git
#                        archive: no build outputs, nothing uncommitted), VERSION from
#                        replicant.control; META.json is checked by regress/tools/check_meta.py
# The whole suite, as a newcomer runs it: bash regress/run_tests.sh

EXTENSION   = replicant
MODULE_big  = replicant
PLUGIN_SRCS = $(sort $(wildcard plugin/*.c))
COMMON_SRCS = $(sort $(wildcard common/*.c))
OBJS        = $(PLUGIN_SRCS:.c=.o) $(COMMON_SRCS:.c=.o)
DATA        = $(sort $(wildcard plugin/replicant--*.sql))
PGFILEDESC  = "replicant - pre-cast change-data-capture output plugin"

REGRESS      = $(basename $(notdir $(sort $(wildcard sql/*.sql))))
# UTF8 whatever the locale: the suite checks non-ASCII text end to end.
REGRESS_OPTS = --temp-instance=tmp_check --temp-config=regress/logical.conf --encoding=UTF8 \
               $(if $(PLUGIN_LIBS_SETTING),--temp-config=regress/plugin_libraries.conf)

PG_CONFIG  ?= pg_config
PG_CPPFLAGS = -DRP_BACKEND -I$(srcdir)/common
# Only servers that know output_plugin_libraries (15.19 and later) may be told about it;
# older ones refuse to start with an unknown setting in postgresql.conf.
PG_BINDIR  := $(shell $(PG_CONFIG) --bindir)
PLUGIN_LIBS_SETTING := $(shell $(PG_BINDIR)/postgres --describe-config 2>/dev/null | grep -c '^output_plugin_libraries')
ifeq ($(PLUGIN_LIBS_SETTING),0)
PLUGIN_LIBS_SETTING :=
endif

# CPPFLAGS, CFLAGS and LDFLAGS from the environment (dpkg-buildpackage passes its hardening
# flags so): PGXS adds the plugin's to them (-DRP_BACKEND, -fPIC) and make would export the
# result to the consumer's make; it gets the environment's own instead.
RP_ENV_FLAGS := $(foreach v,CPPFLAGS CFLAGS LDFLAGS,$(if $(filter environment,$(origin $(v))),$(v)='$($(v))'))

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies (Debian's build has autodepend off): every plugin
# object depends on every header it may include, as the consumer's do, so a changed struct
# never leaves objects compiled against two layouts of it (a partly rebuilt plugin crashed
# the walsender with SIGSEGV at its first slot).
$(OBJS): $(wildcard plugin/*.h common/*.h)

# Common objects are compiled twice: into the plugin (RP_BACKEND, palloc) here, and
# into the consumer (malloc) by consumer/Makefile, in its own object directory.
# PLUGIN_ONLY=1: the plugin alone, for another server's PGXS (the version matrix,
# regress/pg_versions.sh): the consumer is built once, against the system's libpq.
ifndef PLUGIN_ONLY
all: consumer
install: install-consumer
endif
consumer:
	$(RP_ENV_FLAGS) $(MAKE) -C consumer PG_CONFIG=$(PG_CONFIG)

installcheck: regress/plugin_libraries.conf
regress/plugin_libraries.conf:
	echo "output_plugin_libraries = 'pgoutput, test_decoding, replicant'" > $@

# and the layout: every C file as pgindent lays it out (tools/pgindent/pgindent.sh)
unitcheck:
	$(MAKE) -C consumer PG_CONFIG=$(PG_CONFIG) unitcheck
	sh tools/pgindent/pgindent.sh --check

install-consumer:
	$(RP_ENV_FLAGS) $(MAKE) -C consumer PG_CONFIG=$(PG_CONFIG) install

clean: clean-consumer
clean-consumer:
	$(MAKE) -C consumer clean
	rm -f regress/plugin_libraries.conf

DIST_VERSION := $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" replicant.control)
DIST_NAME     = $(EXTENSION)-$(DIST_VERSION)
dist:
	rm -f $(DIST_NAME).zip
	git archive --format=zip --prefix=$(DIST_NAME)/ -o $(DIST_NAME).zip HEAD

.PHONY: consumer unitcheck install-consumer clean-consumer dist
