"""Training scripts of trainers other than the reference one, each copied into a test
workspace as its ``train.py`` and run there for real (see tests/lib/foreign_trainers.py)."""
