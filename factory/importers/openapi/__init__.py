"""`envfarm import openapi`: an OpenAPI description becomes a spec folder, deterministically, no model.

The mapping (what a real API's description says -> what our spec declares):
- **resources -> entities**: every component schema an operation reads or writes as a record becomes a
  table; its scalar properties become typed columns (snake_case), a nested object of scalars is
  flattened one level (`estimate.value` -> `estimate_value`), arrays and deeper objects are kept as
  JSON text. The key is `id`, else `<resource>Id`, else the path parameter that names a row, else a
  synthetic `id`. A column named like another resource's key (`pet_id`, `task_id`) is a foreign key.
- **operations -> tools**: GET of many records -> `search` (query parameters that name a column become
  filters, a parent path parameter a required filter); GET `/x/{key}` -> `get`; POST to a collection ->
  `create` (body properties -> params, parent path parameters -> the foreign key); PUT/PATCH (and a
  POST to `/x/{key}`) -> `update`; DELETE `/x/{key}` -> `delete`. What is not a record operation (login,
  file upload, bulk input, maps and singletons) is skipped and the report says why.
- **actions on a record** (`POST /x/{key}:cancel`, `/x/{key}/favorite`) -> an `update` that sets the state the
  verb names: the status enum's participle (`cancelled`) or a flag column (`favorited`); else skipped.
- **RPC-style operations** (named in the request, not the path: `X-Amz-Target: Svc.CreateThing`, `?Action=`,
  Swagger 2.0's `/#CreateThing`) map by name and shapes: the verb is the effect (`Create`, `Describe`/`Get`,
  `List`, `Update`/`Modify`/`Set`, `Delete`, a state change like `Stop`), the noun the table (its schema, else
  the record the response carries), the input field the reads and writes name a row by its key.
- **pagination -> ours**: page/limit/offset/cursor parameters are dropped; a search returns at most
  `limit` rows (the page-size parameter's maximum or default).
- **auth -> ours**: security schemes and auth header parameters are dropped: our servers act for the
  episode's principal, which the runtime sets; no tool takes credentials.
- **seed**: rows generated from the schemas (enums, formats, examples, names), deterministic per seed.

Modules by responsibility: `document` (reading, Swagger 2.0 normalised), `tables` (schemas -> tables),
`tools`, `readers`, `actions` and `rpc` (operations -> tools), `mapping` (the plan), `seed`, `principal`, `intents`,
`importer` (the whole draft), `entry` (the public entry points re-exported here). Each stage is a class that
extends the one before: ImporterState -> TableBuilder -> ToolBuilder -> ReadBuilder -> ActionBuilder -> RpcMapper
-> OperationMapper -> Importer.

The result is a normal spec folder (`spec.yaml` plus `IMPORT.md` saying what was mapped and what was
not); `envfarm build` publishes it through the same verifier as any other.
"""

from envfarm.factory.importers.openapi.entry import document_source, import_document, import_openapi, write_spec_folder
from envfarm.factory.importers.openapi.models import (
    ImportReport,
    ImportResult,
    MappedOperation,
    OpenAPIError,
    SkippedOperation,
)
from envfarm.factory.importers.openapi.words import first_paragraph, past_participle, plural, safe_name, singular, snake

__all__ = [
    "ImportReport",
    "ImportResult",
    "MappedOperation",
    "OpenAPIError",
    "SkippedOperation",
    "document_source",
    "first_paragraph",
    "import_document",
    "import_openapi",
    "past_participle",
    "plural",
    "safe_name",
    "singular",
    "snake",
    "write_spec_folder",
]
