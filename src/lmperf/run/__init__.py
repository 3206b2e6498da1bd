"""What every measuring feature shares: the sweep grid and its options (declared once), per-step
timing, the bench row type, and the hand-over to a multi-process launcher. Below the features
(bench, profile, distributed, ...), above the model and the analytic models."""
