"""Verification by execution: plan calls from the spec, run them against the server, judge the results;
and the checks around it (static checks of handlers, the coverage gate, mutation testing of the verifier)."""
