"""Environments, samplers, labelling rules and dataset writers. Talks to renderers only through engine.client."""
