"""Other evaluation tools' results as evalyard cases, so their outputs can be scored again."""
