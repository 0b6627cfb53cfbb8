"""Asset manifests (schema, loader, builder) and the shipped default pack."""
