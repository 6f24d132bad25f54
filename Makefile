# Two commands set up everything on a fresh machine:
#   make run   installs finq into .venv and runs it (PostgreSQL, NATS and the five services)
#   make test  installs finq into .venv and runs the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.PHONY: install bytecode browser run test lint format bench bench-resolver bench-documents bench-scale bench-search-scale bench-capacity bench-router dataset clean

$(INSTALLED): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $(INSTALLED)

install: $(INSTALLED)

# finq's own modules compiled ahead (pip compiles the packages it installs): a shell with
# PYTHONDONTWRITEBYTECODE set would otherwise have every process compile them anew, each stage
# start and restart and each CLI call (0.2 CPU-s of the gateway's 1.8 at start). Up-to-date
# files are skipped.
bytecode: install
	$(BIN)/python -m compileall -q -j 0 services shared tests bench > /dev/null

run: install bytecode
	$(BIN)/finq up

# The web app's browser tests (tests/gateway/test_web_app.py) drive Debian's chromium: installed
# here when it is missing and this runs as root with apt-get; otherwise those tests skip.
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && apt-get install -y chromium chromium-driver \
			|| echo "chromium was not installed: the browser tests will skip"; \
	else echo "no chromium and no root apt-get: the browser tests will skip"; fi

# Two workers by default: the suite's pipelines wait on one another as much as they compute,
# so a second worker fills the idle third of two cores (three thrash). --dist loadscope runs
# each module whole on one worker, the longest first (tests/conftest.py: work_unit,
# LONGEST_FIRST). One process: make test PYTEST_WORKERS=
PYTEST_WORKERS ?= -n 2 --dist loadscope

test: install bytecode browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest $(PYTEST_WORKERS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Rebuild the bundled default dataset from ../shared/data (needs the reference data).
dataset: install
	$(BIN)/python -m services.ingest.build_default_dataset

bench: install
	$(BIN)/python bench/pipeline.py
	$(BIN)/python bench/metric_resolver.py
	$(BIN)/python bench/router_cpu.py
	$(BIN)/python bench/documents.py

# Document ingest throughput (Apple 10-K PDFs from ../shared/data) and search latency at
# 50,000 chunks.
bench-documents: install
	$(BIN)/python bench/documents.py

# Figures at 7, 500 and 5,000 companies (synthetic, from the real four's companyfacts in
# ../shared/data): ingest, database size, question p50/p99 at 1 and 64 clients, the tools
# stage's memory under its cache bound; writes its section of bench/RESULTS.md. About 30
# minutes on two cores, held under /tmp/finq-heavy.lock.
bench-scale: install
	flock /tmp/finq-heavy.lock $(BIN)/python bench/scale.py --sizes 7,500,5000 --clients 1,64

# Document search at a million synthetic chunks (500 companies, five years): HNSW build,
# p50/p99 by filter kind, recall@10; writes its section of bench/RESULTS.md. Held under
# /tmp/finq-heavy.lock, so it does not overlap another heavy run on this machine.
bench-search-scale: install
	flock /tmp/finq-heavy.lock $(BIN)/python bench/search_scale.py --chunks 1000000 \
		--companies 500 --queries 200 --recall-sample 100

# Replicas, PostgreSQL instances and a NATS cluster for 1,000 questions/s over 5,000
# companies and 1,000,000 chunks, from the newest results of the benchmarks above.
bench-capacity: install
	$(BIN)/python bench/capacity.py

# The router's rules: CPU per question over every bundled golden question, in process.
bench-router: install
	$(BIN)/python bench/router_cpu.py

# Metric resolver accuracy and latency on bench/metric_phrases*.tsv (no services needed).
bench-resolver: install
	$(BIN)/python bench/metric_resolver.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
