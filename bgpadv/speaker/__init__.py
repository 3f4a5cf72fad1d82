"""The speaker: the only package that knows ExaBGP's syntax and process API."""
