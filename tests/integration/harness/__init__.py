"""Test harness for s3cached integration tests: upstream S3 servers, the gateway, helpers."""
