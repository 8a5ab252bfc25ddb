"""The factory: environment spec -> generated code -> verification -> published server.

By stage, each importing only the ones before it:
- the contract, shared by every stage and by spec folders: `spec` (the model and its checks), `source` (a spec
  folder loaded), `ids` (opaque seed ids), `fakedata` and `world/` (what seed builders draw from);
- `sandbox/`: untrusted code run under an allow-list, limits and an audit hook;
- `generate/`: `codegen` (spec -> code), `growth` (specs proposed and repaired by a model, built through `build`);
- `verify/`: the verifier, its call planning and judging, static checks, coverage gate, mutation testing;
- `publish`, `progress`, `build`: staging and publishing, one job per server, `envfarm build` and `verify`;
- `importers/`: OpenAPI documents, tool metadata, live MCP servers and folders of documents -> spec folders.
"""
