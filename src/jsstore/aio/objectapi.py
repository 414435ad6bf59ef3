"""The object store side of ``jsstore.aio.api``: a store's configuration and an object's
meta and info, as nats-py's ``nats.js.api`` has them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from jsstore.aio.base import Base
from jsstore.aio.streamapi import Placement, StorageType


@dataclass
class ObjectStoreConfig(Base):
    """What create_object_store takes; it becomes the configuration of the store's stream
    ``OBJ_<bucket>``."""
    bucket: Optional[str] = None
    description: Optional[str] = None
    ttl: Optional[float] = None                     # seconds
    max_bytes: Optional[int] = None
    storage: Optional[StorageType] = None
    replicas: int = 1
    placement: Optional[Placement] = None


@dataclass
class ObjectLink(Base):
    """A link to another store's object (or, without a name, to the whole store)."""
    bucket: str
    name: Optional[str] = None


@dataclass
class ObjectMetaOptions(Base):
    link: Optional[ObjectLink] = None
    max_chunk_size: Optional[int] = None
    _nested = {"link": ObjectLink}


@dataclass
class ObjectMeta(Base):
    """What a caller says of an object: its name, description, headers and options."""
    name: Optional[str] = None
    description: Optional[str] = None
    headers: Optional[dict] = None
    options: Optional[ObjectMetaOptions] = None
    _nested = {"options": ObjectMetaOptions}


@dataclass
class ObjectInfo(Base):
    """An object's meta entry: its meta, where its chunks are (nuid), size, chunk count
    and SHA-256 digest."""
    name: str
    bucket: str
    nuid: str
    size: Optional[int] = None
    mtime: Optional[str] = None
    chunks: Optional[int] = None
    digest: Optional[str] = None
    deleted: Optional[bool] = False
    description: Optional[str] = None
    headers: Optional[dict] = None
    options: Optional[ObjectMetaOptions] = None
    _nested = {"options": ObjectMetaOptions}

    @property
    def meta(self) -> ObjectMeta:
        return ObjectMeta(name=self.name, description=self.description,
                          headers=self.headers, options=self.options)

    def is_link(self) -> bool:
        return self.options is not None and self.options.link is not None
