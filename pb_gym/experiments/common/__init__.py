"""What the studies share: their YAML configs, output folders, chunk store, scale-out, statistics
and figures."""
