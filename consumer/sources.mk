# The consumer library's sources, for consumer/Makefile and consumer/fuzz/Makefile: one list,
# so that a file added to a stage folder is built (and fuzzed) without naming it anywhere.
# Paths are relative to consumer/, wherever this file is included from.
RP_SRC_DIR  := $(dir $(lastword $(MAKEFILE_LIST)))
rp_src       = $(patsubst $(RP_SRC_DIR)%,%,$(sort $(wildcard $(addprefix $(RP_SRC_DIR),$(1)))))

# The shared codec, compiled for the client (malloc) here, for the server by PGXS.
COMMON_SRCS  = $(call rp_src,../common/*.c)
# The stages of the data path, each a folder (see README.md): the library, libreplicant.a.
STAGES       = base stream natsio snapshot backfill envelope agg values natsrc lines sinks/log sinks/mirror sinks/nats migrate run
LIB_SRCS     = $(call rp_src,$(addsuffix /*.c,$(STAGES)))
# cli/ is the program, never archived: its entry point cli/main.c, and the rest of it (options,
# commands, the display), which the unit tests link as objects beside the library.
MAIN_SRCS    = cli/main.c
CLI_SRCS     = $(filter-out $(MAIN_SRCS),$(call rp_src,cli/*.c))
HEADERS      = $(call rp_src,../common/*.h $(addsuffix /*.h,$(STAGES) cli))
