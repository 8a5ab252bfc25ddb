"""The runtime every generated server shares: episodes, transactions, control plane, transports.

Imports nothing from `factory` or `clients`.
"""
