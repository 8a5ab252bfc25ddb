"""The factory: environment spec -> generated code -> verification -> published server."""
