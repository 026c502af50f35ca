# One image for every evalloop service; docker-compose.yml picks the command per container.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY services ./services
RUN pip install . \
    && useradd --create-home --uid 10001 evalloop

USER evalloop
# Each service reads EVALLOOP_<SECTION>__<FIELD> (e.g. EVALLOOP_KAFKA__BOOTSTRAP) at start.
CMD ["evalloop", "--help"]
