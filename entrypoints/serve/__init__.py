"""`li serve`: one local page over the store's runs (the app, its board hub, its HTML and assets)."""
