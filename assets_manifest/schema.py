"""The asset manifest format: a pydantic model plus a YAML reader that reports file:line:field.

A manifest is one YAML file describing an *asset pack*::

    pack: my_pack              # name, shown in `sceneforge assets list`
    defaults:                  # optional, merged into every asset (asset values win)
      license: cc-by-4.0
      source: https://example.org/my-models
    assets:
      - id: red_truck
        class: truck
        mesh: meshes/truck.glb         # relative to this file; glTF/GLB/OBJ/PLY/DAE
        units: m                       # the mesh file's unit (cm, m, mm, in, ft)
        up: "+y"                       # source up axis (glTF is +y)
        forward: "+z"                  # source forward axis
        size: {length_cm: 700}         # or height_cm / width_cm / scale
        license: cc-by-4.0
        attribution: "Truck by Jane Doe"
        tags: [vehicle]
        unreal_class: /Game/Vehicles/BP_Truck.BP_Truck_C   # used by a real UE5 server

An asset has exactly one geometry source: ``mesh`` (a file), ``procedural`` (a generator of
:mod:`assets_manifest.procedural`), or ``build`` (a model converted by ``sceneforge assets build``
into the local cache). Errors are :class:`core.errors.ConfigError` and read
``pack.yaml:12: assets[3].units: ...`` so the user can jump to the line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from sceneforge.core.errors import ConfigError

UNITS_TO_CM = {"cm": 1.0, "m": 100.0, "mm": 0.1, "in": 2.54, "ft": 30.48, "km": 1e5}
AXES = ("+x", "-x", "+y", "-y", "+z", "-z")
MESH_SUFFIXES = (".glb", ".gltf", ".obj", ".ply", ".dae", ".stl", ".off")
# Every class SpaRRTa uses (source, target and viewpoint objects of its five environments).
SPARRTA_CLASSES = (
    "rock",
    "tree",
    "truck",
    "taxi",
    "bike",
    "vespa",
    "cactus",
    "camel",
    "barrel",
    "bear",
    "fox",
    "husky",
    "deer",
    "tent",
    "snowman",
    "trash_bin",
    "cone",
    "fire_hydrant",
    "human",
)
CLUTTER_CLASSES = (
    "building",
    "house",
    "bridge",
    "bench",
    "lamp_post",
    "bush",
    "car",
    "fence",
    "dune",
    "crate",
    "sign",
    "hut",
)
KNOWN_CLASSES = SPARRTA_CLASSES + CLUTTER_CLASSES
_ID_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
_CLASS_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
# Label text of classes declared by packs (``classes:``), filled by load_manifest; see class_label.
_DECLARED_LABELS: dict[str, tuple[str, str]] = {}  # class -> (label, manifest that declared it)


def default_label(cls: str) -> str:
    """SpaRRTa-style actor label: ``fire_hydrant`` -> ``FireHydrant``, ``rock`` -> ``Rock``."""
    return "".join(w.capitalize() for w in cls.replace("-", "_").split("_"))


def class_label(cls: str) -> str:
    """The text written into SpaRRTa records for ``cls``: the label a pack declared for it (in any
    manifest this process loaded), else :func:`default_label`."""
    declared = _DECLARED_LABELS.get(cls)
    return declared[0] if declared else default_label(cls)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class SizeSpec(_Strict):
    """Real-world size: one of the targets (uniform scale so that extent == target) or a scale."""

    height_cm: float | None = Field(None, gt=0)
    length_cm: float | None = Field(None, gt=0)  # extent along forward (UE X)
    width_cm: float | None = Field(None, gt=0)  # extent along right (UE Y)
    scale: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _one(self) -> "SizeSpec":
        given = [k for k in ("height_cm", "length_cm", "width_cm", "scale") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError(f"give exactly one of height_cm, length_cm, width_cm, scale (got {given or 'none'})")
        return self


class ProceduralSpec(_Strict):
    generator: str
    params: dict[str, Any] = Field(default_factory=dict)


class BuildSpec(_Strict):
    """A model inside a Debian package, converted by ``sceneforge assets build``."""

    source: Literal["sh3d", "0ad"]
    library: str = ""  # sweethome3d: catalog folder (Scopia, KatorLegaz, ...)
    model: str  # path inside the library/archive, e.g. scopia/truck/truck.obj
    texture: str | None = None  # 0ad: the DDS skin inside public.zip
    recolor: tuple[int, int, int] | None = None  # e.g. a yellow taxi from a generic sedan


class AssetEntry(_Strict):
    id: str
    cls: str = Field(alias="class")
    mesh: str | None = None
    procedural: ProceduralSpec | None = None
    build: BuildSpec | None = None
    license: str
    attribution: str = ""
    source: str = ""
    size: SizeSpec | None = None
    units: str = "cm"
    up: str = "+z"
    forward: str = "+x"
    ground_offset_cm: float = 0.0
    tags: list[str] = Field(default_factory=list)
    unreal_class: str | None = None
    triangle_budget: int | None = Field(None, gt=0)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not _ID_RE.match(v):
            raise ValueError(f"id {v!r} may only contain letters, digits, '_', '.', '-'")
        return v

    @field_validator("cls")
    @classmethod
    def _cls(cls, v: str, info: ValidationInfo) -> str:
        declared = set((info.context or {}).get("classes", ()))
        if v not in KNOWN_CLASSES and v not in declared:
            raise ValueError(
                f"unknown class {v!r}; declare it under 'classes:' (with its label) or use one of: {', '.join(KNOWN_CLASSES)}"
            )
        return v

    @field_validator("units")
    @classmethod
    def _units(cls, v: str) -> str:
        if v not in UNITS_TO_CM:
            raise ValueError(f"bad units {v!r}; use one of {', '.join(UNITS_TO_CM)}")
        return v

    @field_validator("up", "forward")
    @classmethod
    def _axis(cls, v: str) -> str:
        v = v.strip().lower()
        if v in ("x", "y", "z"):
            v = "+" + v
        if v not in AXES:
            raise ValueError(f"axis {v!r} must be one of {', '.join(AXES)}")
        return v

    @field_validator("license")
    @classmethod
    def _license(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("license must not be empty")
        return v.strip().lower()

    @model_validator(mode="after")
    def _geometry(self) -> "AssetEntry":
        given = [k for k in ("mesh", "procedural", "build") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of mesh, procedural, build (got {given or 'none'})")
        if self.up[1] == self.forward[1]:
            raise ValueError(f"up {self.up} and forward {self.forward} must be different axes")
        if self.mesh is not None and not self.mesh.lower().endswith(MESH_SUFFIXES):
            raise ValueError(f"mesh {self.mesh!r}: unsupported format (use {', '.join(MESH_SUFFIXES)})")
        return self


class ClassSpec(_Strict):
    """A class a pack adds (``classes: {lighthouse: {label: Lighthouse}}``)."""

    label: str = Field(min_length=1, max_length=64)  # text in SpaRRTa records (actors' "label")
    description: str = ""


class Manifest(_Strict):
    pack: str
    version: int = 1
    defaults: dict[str, Any] = Field(default_factory=dict)
    classes: dict[str, ClassSpec] = Field(default_factory=dict)  # new object classes of this pack
    assets: list[AssetEntry]

    @field_validator("classes")
    @classmethod
    def _class_names(cls, v: dict) -> dict:
        for name in v:
            if not _CLASS_RE.match(name):
                raise ValueError(f"class {name!r}: use lower-case letters, digits and '_' (starting with a letter)")
            if name in KNOWN_CLASSES:
                raise ValueError(f"class {name!r} is built in; declare only new classes")
        return v

    @model_validator(mode="before")
    @classmethod
    def _apply_defaults(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("defaults"), dict):
            d = data["defaults"]
            assets = data.get("assets")
            if isinstance(assets, list):
                data = dict(data, assets=[{**d, **a} if isinstance(a, dict) else a for a in assets])
        return data

    @model_validator(mode="after")
    def _unique(self) -> "Manifest":
        seen: set[str] = set()
        known = set(KNOWN_CLASSES) | set(self.classes)
        for i, a in enumerate(self.assets):
            if a.id in seen:
                raise ValueError(f"duplicate asset id {a.id!r}")
            seen.add(a.id)
            if a.cls not in known:  # validated without load_manifest's context
                raise ValueError(f"assets[{i}] ({a.id}): unknown class {a.cls!r}; declare it under 'classes:'")
        return self


# ---- YAML reading with line numbers -------------------------------------------------------------


def _node_at(node: yaml.Node | None, loc: tuple) -> yaml.Node | None:
    """Follow a pydantic error location through the composed YAML node tree (deepest match)."""
    for key in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == key), None)
            if child is None and key == "cls":
                child = next((v for k, v in node.value if k.value == "class"), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            child = node.value[key]
        if child is None:
            break
        node = child
    return node


def _loc_str(loc: tuple) -> str:
    out = ""
    for k in loc:
        if isinstance(k, int):
            out += f"[{k}]"
        else:
            out += ("." if out else "") + ("class" if k == "cls" else str(k))
    return out


def read_yaml(path: Path) -> tuple[Any, yaml.Node | None]:
    """Parse YAML, returning (data, node tree); syntax errors name file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise ConfigError(f"{path}: file not found") from e
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read ({e})") from e
    return read_yaml_text(text, path)


def read_yaml_text(text: str, path: Path) -> tuple[Any, yaml.Node | None]:
    """Parse YAML ``text`` (the content of ``path``); syntax errors name file and line."""
    try:
        return yaml.safe_load(text), yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{line}: bad YAML: {getattr(e, 'problem', None) or e}") from e


def validation_message(path: Path, err: ValidationError, root: yaml.Node | None, data: Any) -> str:
    """One line per pydantic error: ``file:line: field (asset id): message``."""
    lines = []
    for e in err.errors():
        loc = tuple(x for x in e["loc"] if not (isinstance(x, str) and x.startswith("function-")))
        node = _node_at(root, loc)
        line = f":{node.start_mark.line + 1}" if node is not None else ""
        who = ""
        if len(loc) >= 2 and loc[0] == "assets" and isinstance(loc[1], int):
            try:
                who = f" (asset {data['assets'][loc[1]]['id']!r})"
            except (KeyError, TypeError, IndexError):
                who = ""
        msg = e["msg"].removeprefix("Value error, ")
        lines.append(f"{path}{line}: {_loc_str(loc) or '<top>'}{who}: {msg}")
    return "; ".join(lines)


def load_manifest(path: str | Path) -> Manifest:
    """Read and validate one manifest; raises ConfigError naming file, line and field."""
    path = Path(path)
    data, root = read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a manifest must be a mapping with 'pack' and 'assets'")
    try:
        declared = data.get("classes") if isinstance(data.get("classes"), dict) else {}
        manifest = Manifest.model_validate(data, context={"classes": [str(k) for k in declared]})
    except ValidationError as e:
        raise ConfigError(validation_message(path, e, root, data)) from None
    for name, spec in manifest.classes.items():
        old = _DECLARED_LABELS.get(name)
        if old is not None and old[0] != spec.label and old[1] != str(path):
            raise ConfigError(f"{path}: classes.{name}: label {spec.label!r} differs from {old[0]!r} declared in {old[1]}")
        _DECLARED_LABELS[name] = (spec.label, str(path))
    return manifest
