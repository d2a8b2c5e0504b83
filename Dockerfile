# The Outreach service as an image: `outreach` is the entry point, `serve` the default command.
#
#   docker build -t outreach .
#   docker run -p 8000:8000 -v outreach-data:/data outreach          # SQLite in the /data volume
#   docker run outreach worker --host 0.0.0.0 --port 9000              # workers only (PostgreSQL)
#
# compose.yaml runs it with PostgreSQL, scalable workers and Caddy in front (README, "Self-hosting").

# Build stage: the package and its runtime dependencies (not the dev extra) in a virtualenv.
FROM python:3.12-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY outreach_core ./outreach_core
COPY http_api ./http_api
COPY mcp_server ./mcp_server
COPY workers ./workers
COPY outreach_app ./outreach_app
RUN python -m venv /opt/outreach \
    && /opt/outreach/bin/pip install --quiet --upgrade pip \
    && /opt/outreach/bin/pip install --quiet . \
    && /opt/outreach/bin/outreach --version

# Runtime stage: the virtualenv only, run by an unprivileged user.
FROM python:3.12-slim
RUN groupadd --system --gid 10001 outreach \
    && useradd --system --uid 10001 --gid outreach --home-dir /data --create-home --shell /usr/sbin/nologin outreach \
    && install -d -o outreach -g outreach /data/tracking-journal
COPY --from=build /opt/outreach /opt/outreach
ENV PATH=/opt/outreach/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    OUTREACH_DATABASE_URL=sqlite:////data/outreach.db \
    OUTREACH_LOG_JSON=1 \
    XDG_STATE_HOME=/data/state
# Local state in the /data volume: with PostgreSQL the tracking journal defaults to
# /data/state/outreach/tracking-journal/<database> (docs/tracking.md); with SQLite it sits beside the database.
USER outreach:outreach
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000
# /healthz of `outreach serve` on 8000; a worker container started with `--port 9000` sets
# HEALTHCHECK_URL=http://127.0.0.1:9000/healthz (compose.yaml does).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; url = os.environ.get('HEALTHCHECK_URL', 'http://127.0.0.1:8000/healthz'); sys.exit(0 if urllib.request.urlopen(url, timeout=4).status == 200 else 1)"]
ENTRYPOINT ["outreach"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
