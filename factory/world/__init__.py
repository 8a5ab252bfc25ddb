"""The farm's one world: a cast, a clock and the cross-server facts every built-in seed reads.

Seed builders (`factory/specs/*/seed.py`) take people, dates and shared facts from here instead of
inventing their own, and `envfarm.factory.world.invariants` checks the published seeds against each other.
"""
