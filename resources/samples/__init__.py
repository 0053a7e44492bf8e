"""Bundled samples: the seeds export scenarios (models.py), their ONNX files and inputs."""
