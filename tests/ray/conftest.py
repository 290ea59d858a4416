from tests.s3_server import s3_server

__all__ = ["s3_server"]  # S3 checkpoint storage for test_ray_search
