"""The S3-compatible server the checkpoint-upload fault test stores its checkpoints in."""

from tests.s3_server import s3_server

__all__ = ["s3_server"]
