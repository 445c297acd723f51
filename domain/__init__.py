"""The pure core of lionrun: the contract's shapes and the rules that derive answers from records."""
