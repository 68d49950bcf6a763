# The two commands of the README: `make run` (the whole product) and `make test` (lint + all tests, what CI runs).
# Both create .venv with Python 3.11 and reinstall the project only when pyproject.toml changed.

PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed
CHROMIUM := /usr/bin/chromium

.PHONY: run test lint fmt bench bench-logs tour

run: $(STAMP)
	$(VENV)/bin/python -m config.runner

# Tests run on three worker processes (pytest-xdist), each with its own database and Redis (tests/embedded.py);
# tests of one xdist_group share a worker. PYTEST_ARGS='-n 0' runs them in one process. Three on 2 cores because
# tests wait on the sandbox much of the time: a clean-clone .ci/run's tests took 14:50 against 18:31 with two.
# The 30 slowest tests are listed at the end: the suite must stay under 20 minutes on 2 cores.
test: $(STAMP) $(CHROMIUM)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest -n 3 --dist loadgroup --durations=30 $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

fmt: $(STAMP)
	$(VENV)/bin/ruff check --fix .

# The operations benchmark (bench/README.md): minutes, a PostgreSQL server, not part of `make test`.
bench: $(STAMP)
	$(VENV)/bin/python -m bench.operations_bench $(BENCH_ARGS)

# The training-log streaming benchmark (bench/README.md): ~3 minutes, a PostgreSQL server, not part of `make test`.
bench-logs: $(STAMP)
	$(VENV)/bin/python -m bench.training_logs_bench $(BENCH_ARGS)

# The screenshot tour: every portal page in the sandbox, in headless Chromium, into docs/screenshots/ (a few minutes;
# not part of `make test`). See tests/e2e/tour.py.
tour: $(STAMP) $(CHROMIUM)
	$(VENV)/bin/python -m pytest -n 0 -p no:cacheprovider tests/e2e/tour.py $(PYTEST_ARGS)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# The first install downloads and installs ~180 packages: a few minutes, with pip's progress shown (README, "Two commands").
$(STAMP): pyproject.toml | $(VENV)/bin/python
	@echo "Installing the project and its dependencies into $(VENV) (first run: a few minutes)..."
	$(VENV)/bin/python -m pip install --progress-bar on -e '.[test,dev,sandbox]'
	@echo "Installed; later runs skip this step until pyproject.toml changes."
	touch $@

# Browser tests drive Debian's Chromium; only root can install it, anyone else is told how.
$(CHROMIUM):
	@if [ "$$(id -u)" -eq 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; \
	else \
		echo "Chromium is missing: run 'sudo apt-get install chromium'; tests marked browser will fail until then."; \
	fi
