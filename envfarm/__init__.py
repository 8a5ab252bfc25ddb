"""envfarm, the one import namespace of the distribution: the command line (`envfarm.cli`, ...) and the LLM
client (`envfarm.llm`) live in this folder; `envfarm.factory`, `envfarm.servers` and `envfarm.clients` are
the repository's `factory/`, `servers/` and `clients/` folders, mapped under this name by setup.py.
Importing it imports nothing else."""
