# The production image: one image, one process type per container. Default CMD is the web process
# (portal, REST, WebSockets and /mcp on port 3099); Celery worker and beat override the command
# (see docker-compose.yml and docs/deploy.md). Configuration comes from the environment only.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    INSTANTSTART_VAR_DIR=/app/var

WORKDIR /app
RUN groupadd --system --gid 10001 instantstart \
    && useradd --system --uid 10001 --gid instantstart --home-dir /app --no-create-home instantstart

# Dependencies first, from pyproject.toml alone, so a code change does not reinstall them.
COPY pyproject.toml README.md ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# The project itself, installed in place: the code runs from /app beside manage.py, templates/ and static/.
# collectstatic needs a secret key to load settings; the build-only one never reaches the image's environment.
COPY . .
RUN pip install --no-deps -e . \
    && INSTANTSTART_SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput --verbosity 0 \
    && mkdir -p /app/var \
    && chown -R instantstart:instantstart /app/var

USER instantstart
EXPOSE 3099
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:3099/healthz', timeout=4)"]
CMD ["uvicorn", "config.asgi:application", "--host", "0.0.0.0", "--port", "3099", "--lifespan", "on", "--proxy-headers"]
