"""Reports, rendered only from the final state and the ledger: the document's model
(``model``), building it (``build``), and rendering it as Markdown (``markdown``), HTML
(``html``) or on a terminal (``terminal``)."""
