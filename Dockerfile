# The whole envfarm farm over streamable HTTP from one process: every server at http://<host>:8000/<name>/mcp
#   docker build -t envfarm .
#   docker run --rm -p 8000:8000 -e ENVFARM_TOKEN=<a long random secret> envfarm
# Every request then needs `Authorization: Bearer <token>`. Without ENVFARM_TOKEN the container refuses
# to start (it says why): a farm on all interfaces with no token would hand every episode to the network.
# ENVFARM_ALLOW_HOST lists the Host names clients use (DNS-rebinding checks stay on); reaching the
# container by another name (a server's DNS name, a compose service): -e ENVFARM_ALLOW_HOST=name,localhost
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY . /app
# A regular install, as from a wheel: the farm served is the installed package (registry and data included).
RUN pip install .

RUN useradd --create-home envfarm
USER envfarm

ENV ENVFARM_ALLOW_HOST=localhost,127.0.0.1
EXPOSE 8000
# Inside the container the farm must listen on all interfaces; outside, HTTP binds 127.0.0.1 by default.
CMD ["envfarm", "serve", "--all", "--host", "0.0.0.0", "--port", "8000"]
