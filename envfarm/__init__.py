"""envfarm's command line: the front door to the factory, the farm and the driver."""
