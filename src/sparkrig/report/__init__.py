"""Terminal tables for what sparkrig measured."""
