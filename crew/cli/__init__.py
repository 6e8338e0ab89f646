"""Every command of `research-crew`: one module per command group; `main` assembles them."""
