"""`lmperf plan`: a data-parallel train step predicted on N GPUs before renting them.

Compute from a measured one-GPU step or the FLOP model at an assumed MFU, plus the communication
the step cannot hide: DDP's and FSDP2's collectives (schedule.py) timed by an alpha-beta model
fitted to `lmperf comm` rows and scaled by ring formulas inside and between nodes
(collectives.py), exposed as predict.py says; memory per rank from the analytic model. Every
figure names the assumption it rests on (assumptions.py). check.py puts the model beside measured
steps, calibration.py holds the figures used when no rows are given."""
