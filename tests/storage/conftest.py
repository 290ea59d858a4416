"""The S3-compatible server the storage tests run the S3 backend against."""

from tests.s3_server import s3_server

__all__ = ["s3_server"]
