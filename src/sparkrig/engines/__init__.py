"""Engines sparkrig drives: how to build, launch, probe and read the metrics of each."""
