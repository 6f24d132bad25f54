# syntax=docker/dockerfile:1
# One image for all six services; the command picks the service:
#   python -m services.gateway | router | tools | answerer | validator | ingest
# and `finq migrate` / `finq ingest default` for the one-shot database job.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

WORKDIR /src

# Dependencies first, in their own layer, so a code change does not reinstall
# them: empty stand-ins for the two top-level packages are enough to install
# the project's pinned dependencies.
COPY pyproject.toml constraints.txt ./
RUN mkdir shared services \
    && touch shared/__init__.py services/__init__.py \
    && pip install -c constraints.txt . \
    && rm -rf shared services build ./*.egg-info

# Then the code, installed as a regular (non-editable) package: setuptools
# finds shared* and services* and ships their package data (the SQL
# migrations and the bundled default dataset).
COPY shared/ shared/
COPY services/ services/
RUN pip install --no-deps --force-reinstall -c constraints.txt . \
    && cd / && rm -rf /src

# The processes run as uid/gid 10001 with a read-only root filesystem (docker-compose.yml
# and deploy/k8s/ enforce it): they write only /tmp, which the deployments mount writable
# (a tmpfs or an emptyDir): torch's and tempfile's scratch (the bundled MiniLM is read
# from site-packages, nothing goes to ~/.cache), the gateway's spool of an upload while
# its body arrives (FINQ_DOCUMENT_UPLOAD_DIR unset: the system temp dir; the upload itself
# is stored in PostgreSQL), and the ingest stage's parse files and forkserver socket.
RUN groupadd --gid 10001 finq \
    && useradd --uid 10001 --gid 10001 --create-home --shell /usr/sbin/nologin finq
USER 10001:10001
WORKDIR /home/finq

# Inside a container the gateway must listen on every interface.
ENV FINQ_GATEWAY_HOST=0.0.0.0 \
    FINQ_GATEWAY_PORT=8000
EXPOSE 8000

CMD ["python", "-m", "services.gateway"]
