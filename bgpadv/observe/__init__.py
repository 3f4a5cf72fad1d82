"""What watches every stage and never steers: the observer seams and fan-out, metrics, convergence, readiness, the
health server, Kubernetes Events for refusals, logs."""
