"""Start, watch and stop engine processes; only ever stop what sparkrig recorded starting."""
