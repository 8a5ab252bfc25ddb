"""The driver: talks to servers only over MCP; graphs, tasks, rollouts, scoring, export."""
