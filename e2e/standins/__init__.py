"""Stand-ins for the two sides that cannot run here (AWS, pulumi-tls), each producing what the real
part produces, from the same settings. Nothing in `components/` knows they exist."""
