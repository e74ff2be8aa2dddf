# tests/fault/fault.mk - fault injection (included by the top Makefile).
#   make fault-shim   build/fault/faultfs.so, the LD_PRELOAD shim (and
#                     powercut.so, timeshift.so: the wall clock stepped)
#   make fault        the short fault tests (also part of `make integration`)
#   make chaos        the long run: 30 kill -9 of hookd under load, then the
#                     disk-full, I/O-error, corrupt-start and checkpoint
#                     tests; bounded (< 15 min), summary table at the end;
#                     then the long hostile-client run (10,000 idle
#                     connections, 1,000 half-sent 1 MiB lines, 100
#                     non-reading pipeliners, worst-case lines, as nobody:
#                     tests/integration/test_hostile_clients.py, needs root)
# Knobs: CHAOS_KILLS (30), CHAOS_SECONDS (time cap of the kill loop, 600),
# CHAOS_SEED (replay a run: the seed is printed at its start and end),
# CHAOS_HOSTILE_SECONDS (the hostile-client run's length, 60).
# See tests/fault/README.md.

FAULT_OUT   := $(BUILD)/fault
FAULT_SHIM  := $(FAULT_OUT)/faultfs.so
CHAOS_KILLS   ?= 30
CHAOS_SECONDS ?= 600
CHAOS_HOSTILE_SECONDS ?= 60

.PHONY: fault-shim fault chaos

$(FAULT_SHIM): tests/fault/faultfs.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -fPIC -shared -o $@ $< -ldl

$(FAULT_OUT)/powercut.so: tests/fault/powercut.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -fPIC -shared -o $@ $< -ldl -lpthread

$(FAULT_OUT)/timeshift.so: tests/fault/timeshift.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -fPIC -shared -o $@ $< -ldl

fault-shim: $(FAULT_SHIM) $(FAULT_OUT)/powercut.so $(FAULT_OUT)/timeshift.so

fault: $(HOOKD) $(FAULT_SHIM) $(FAULT_OUT)/powercut.so
	HOOKD_BIN=$(HOOKD_BIN) FAULTFS_SO=$(abspath $(FAULT_SHIM)) POWERCUT_SO=$(abspath $(FAULT_OUT)/powercut.so) \
	  $(PYTHON) -m pytest -q tests/integration/test_faults.py $(PYTEST_ARGS)

chaos: $(HOOKD) $(FAULT_SHIM) $(FAULT_OUT)/powercut.so $(FAULT_OUT)/timeshift.so
	HOOKD_BIN=$(HOOKD_BIN) FAULTFS_SO=$(abspath $(FAULT_SHIM)) POWERCUT_SO=$(abspath $(FAULT_OUT)/powercut.so) \
	  TIMESHIFT_SO=$(abspath $(FAULT_OUT)/timeshift.so) \
	  timeout --signal=TERM --kill-after=30 900 \
	  $(PYTHON) tests/fault/chaos.py --kills $(CHAOS_KILLS) --seconds $(CHAOS_SECONDS)
	HOOKD_BIN=$(HOOKD_BIN) HOOKD_HOSTILE_LONG=1 HOOKD_HOSTILE_SECONDS=$(CHAOS_HOSTILE_SECONDS) \
	  timeout --signal=TERM --kill-after=30 900 \
	  $(PYTHON) -m pytest -q -s tests/integration/test_hostile_clients.py -k long $(PYTEST_ARGS)
