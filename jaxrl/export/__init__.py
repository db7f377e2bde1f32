"""`python -m jaxrl.export TARGET OUT.onnx`: a trained policy as an ONNX file (`jaxrl.cli.export`; the work is
`jaxrl.trained.export`'s)."""
