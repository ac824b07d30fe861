"""What the tests share: helpers, fixtures (the sshd, the workspaces, the foreign trainers
are pytest plugins here), and the scripts tests run as real processes. No tests here."""
