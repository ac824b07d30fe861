"""Runnable examples that dflash-doctor is exercised against (see ``dflash_trainer``)."""
