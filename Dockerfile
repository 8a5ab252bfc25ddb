# The whole envfarm farm over streamable HTTP from one process: every server at http://<host>:8000/<name>/mcp
#   docker build -t envfarm . && docker run --rm -p 8000:8000 envfarm
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY . /app
# A regular install, as from a wheel: the farm served is the installed package (registry and data included).
RUN pip install .

RUN useradd --create-home envfarm
USER envfarm

EXPOSE 8000
# Inside the container the farm must listen on all interfaces; outside, HTTP binds 127.0.0.1 by default.
CMD ["envfarm", "serve", "--all", "--host", "0.0.0.0", "--port", "8000"]
