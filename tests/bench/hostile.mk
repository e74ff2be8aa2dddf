# tests/bench/hostile.mk - what a hostile local client can cost the event
# loop (included by the top Makefile).
#   make bench-hostile   the most expensive request lines of max_line bytes
#                        (tests/bench/worstline.c): median and max time of
#                        one line's parse, which is how long every other
#                        client waits behind it; fails above WORST_TARGET_MS.
#                        Results in build/bench/worstline.txt.
# Knobs: WORST_ROUNDS (11), WORST_LINE (1048576, the default max_line),
# WORST_PAYLOAD (262144, max_payload), WORST_TARGET_MS (5).
# The load side (idle, half-sent, non-reading and worst-line clients against
# a running hookd) is tests/integration/test_hostile_clients.py.

WORST_BIN       := $(BUILD)/bench/worstline
WORST_ROUNDS    ?= 11
WORST_LINE      ?= 1048576
WORST_PAYLOAD   ?= 262144
WORST_TARGET_MS ?= 5

.PHONY: bench-hostile worst-corpus

$(WORST_BIN): tests/bench/worstline.c $(BUILD)/libhookd.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(BUILD)/libhookd.a $(LDFLAGS) $(LDLIBS)

bench-hostile: $(WORST_BIN)
	$(WORST_BIN) -n $(WORST_ROUNDS) -l $(WORST_LINE) -p $(WORST_PAYLOAD) -t $(WORST_TARGET_MS) \
	  | tee $(BUILD)/bench/worstline.txt

# the fuzz corpus's worst_* seeds: the same shapes at 32 KiB, past every limit of proto.h
worst-corpus: $(WORST_BIN)
	$(WORST_BIN) -n 1 -l 32768 -p 8192 -t 1000 -o tests/fuzz/corpus/proto
