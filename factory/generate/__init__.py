"""Writing servers: a spec rendered as code (`codegen`, deterministic) and specs grown by a model (`growth`)."""
