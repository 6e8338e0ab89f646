"""`research-crew bench`: many (challenge, model, repeat) runs, each in its own run directory, and a table."""
