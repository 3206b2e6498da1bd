"""Result rows on disk (rundir), their environment, and the tables and plots rendered from them."""
