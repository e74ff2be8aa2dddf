# tests/fault/fault.mk - fault injection (included by the top Makefile).
#   make fault-shim   build/fault/faultfs.so, the LD_PRELOAD shim (and
#                     powercut.so, timeshift.so: the wall clock stepped)
#   make fault        the short fault tests (also part of `make integration`)
#   make chaos        the long run: 30 kill -9 of hookd under load, then the
#                     disk-full, I/O-error, corrupt-start and checkpoint
#                     tests; bounded (< 15 min), summary table at the end
# Knobs: CHAOS_KILLS (30), CHAOS_SECONDS (time cap of the kill loop, 600),
# CHAOS_SEED (replay a run: the seed is printed at its start and end).
# See tests/fault/README.md.

FAULT_OUT   := $(BUILD)/fault
FAULT_SHIM  := $(FAULT_OUT)/faultfs.so
CHAOS_KILLS   ?= 30
CHAOS_SECONDS ?= 600

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
