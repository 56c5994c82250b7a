# The two README commands: `make demo` (install + start the dashboard on the demo runs)
# and `make check` (install what the tests need + lint + types + the whole test suite).
PY ?= python3
PIP = $(PY) -m pip install -q --disable-pip-version-check

.PHONY: demo install install-dev chromium prometheus lint types test check bench

demo: install
	$(PY) -m data.demo
	$(PY) -m streamlit run serve.py

install:
	$(PIP) -r requirements.txt

install-dev: chromium prometheus
	$(PIP) -r requirements-dev.txt

# Debian's Chromium for the browser tests (Playwright's own download cannot work offline).
chromium:
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

# Debian's Prometheus server: the Prometheus tests scrape the agent with a real one.
prometheus:
	@command -v prometheus >/dev/null || (apt-get update -qq && apt-get install -y -qq prometheus >/dev/null)

lint:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

types:
	$(PY) -m mypy

test:
	$(PY) -m pytest -q

check: install-dev lint types test

# Every benchmark script (numbers go to BENCHMARKS.md by hand, with the machine's load).
bench:
	$(PIP) -r benchmarks/requirements.txt
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done
