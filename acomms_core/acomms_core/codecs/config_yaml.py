"""Reading a codec config YAML safely: the one loader nodes and the scenario loader use.

- Duplicate keys in a mapping are refused (plain YAML keeps the last one silently).
- Include tags of rospy_yaml_include, as ros_acomms configs use them: `!include`,
  `!relative_include`, `!path_include` (relative paths resolve against the including file's
  directory, or against `codec_directory` when given, as ros_acomms does). The target must be
  a regular file inside the top config file's directory tree, `codec_directory` or
  one of `include_paths` (node parameter `codec_include_paths`); symlinks are resolved first, so
  `../` and links cannot leave those trees. At most MAX_INCLUDES includes per config, each at
  most MAX_FILE_BYTES. A missing target is named.
- `!variable_substitute` / `!variable_include` (environment variables, `${NAME}`) only when
  `allow_env_substitution` (node parameter `codec_allow_env_substitution`) is true.
- `!ros_include` / `!ros_param_*` are refused with a reason (no ROS parameter server here).
Every problem raises CodecYamlError with a one-line reason.
"""

from __future__ import annotations

import os
import re
import stat

import yaml

MAX_INCLUDES = 64
MAX_FILE_BYTES = 1 << 20
INCLUDE_TAGS = ("!include", "!relative_include", "!path_include")
ENV_TAGS = ("!variable_substitute", "!variable_include")
UNSUPPORTED_TAGS = ("!ros_include", "!ros_param_substitute", "!ros_param_include")
MERGE_TAG = "tag:yaml.org,2002:merge"  # YAML merge keys (`<<: *anchor`) stay allowed
_VARIABLE = re.compile(r"\$\{(.*?)\}")


class CodecYamlError(ValueError):
    """A codec config file that cannot be read; the message says which file and why."""


def _within(path: str, roots) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def read_text(path: str, roots=None) -> str:
    """The text of a regular file (inside roots, when given), bounded in size."""
    real = os.path.realpath(path)
    if roots is not None and not _within(real, roots):
        raise CodecYamlError(f"include '{path}' is outside the config directory and "
                             f"codec_include_paths ({', '.join(roots)})")
    try:
        info = os.stat(real)
    except OSError as exc:
        raise CodecYamlError(f"cannot read '{path}': {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise CodecYamlError(f"'{path}' is not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise CodecYamlError(f"'{path}' is larger than {MAX_FILE_BYTES} bytes")
    try:
        with open(real, encoding="utf-8") as stream:
            return stream.read(MAX_FILE_BYTES + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise CodecYamlError(f"cannot read '{path}': {exc}") from None


class _Reader:
    """State shared by every file of one config: allowed roots, include count, env switch."""

    def __init__(self, roots, allow_env_substitution: bool, base_directory: str = ""):
        self.roots = roots
        self.allow_env = allow_env_substitution
        self.base_directory = base_directory  # relative includes: here, not the includer's dir
        self.includes = 0

    def load(self, path: str, roots=None):
        text = read_text(path, roots)
        loader_class = self.loader_class(os.path.dirname(os.path.realpath(path)))
        loader = loader_class(text)
        try:
            return loader.get_single_data()
        except CodecYamlError as exc:
            raise CodecYamlError(f"{path}: {exc}") from None
        except yaml.YAMLError as exc:
            raise CodecYamlError(f"{path}: not valid YAML: {_one_line(exc)}") from None
        finally:
            loader.dispose()

    def include(self, base_dir: str, target) -> object:
        self.includes += 1
        if self.includes > MAX_INCLUDES:
            raise CodecYamlError(f"more than {MAX_INCLUDES} includes (circular?)")
        if not isinstance(target, str) or not target:
            raise CodecYamlError(f"include target must be a file name, got {target!r}")
        path = (target if os.path.isabs(target)
                else os.path.join(self.base_directory or base_dir, target))
        if not os.path.exists(path):
            raise CodecYamlError(f"include target '{target}' not found (looked for {path})")
        return self.load(path, self.roots)

    def substitute(self, text) -> str:
        if not self.allow_env:
            raise CodecYamlError("environment substitution is disabled (set the parameter "
                                 "codec_allow_env_substitution to use !variable_substitute)")
        for name in _VARIABLE.findall(str(text)):
            value = os.environ.get(name)
            if value is None:
                raise CodecYamlError(f"environment variable '{name}' is not set")
            text = str(text).replace(f"${{{name}}}", value)
        return str(text)

    def loader_class(self, base_dir: str):
        reader = self

        class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            def construct_mapping(self, node, deep=False):
                seen = set()
                for key_node, _ in node.value:
                    if key_node.tag == MERGE_TAG:  # `<<: *anchor`: merged keys may be overridden
                        continue
                    key = self.construct_object(key_node, deep=True)
                    if isinstance(key, (str, int, float, bool)) or key is None:
                        if key in seen:
                            raise CodecYamlError(f"duplicate key {key!r} at line "
                                                 f"{key_node.start_mark.line + 1}")
                        seen.add(key)
                self.flatten_mapping(node)
                return super().construct_mapping(node, deep=deep)

        def include(loader, node):
            return reader.include(base_dir, loader.construct_scalar(node))

        def env_include(loader, node):
            return reader.include(base_dir, reader.substitute(loader.construct_scalar(node)))

        def unsupported(loader, node):
            raise CodecYamlError(f"tag {node.tag} is not supported (line "
                                 f"{node.start_mark.line + 1})")

        for tag in INCLUDE_TAGS:
            Loader.add_constructor(tag, include)
        def substitute(loader, node):
            return reader.substitute(loader.construct_scalar(node))

        Loader.add_constructor("!variable_substitute", substitute)
        Loader.add_constructor("!variable_include", env_include)
        for tag in UNSUPPORTED_TAGS:
            Loader.add_constructor(tag, unsupported)
        return Loader


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def read_codec_yaml(path: str, include_paths=(), allow_env_substitution: bool = False,
                    codec_directory: str = ""):
    """The parsed YAML of a codec config file (see the module doc); CodecYamlError if not.

    codec_directory (ros_acomms' parameter): relative include paths are read from there instead
    of the including file's directory, and it is an allowed root."""
    top = os.path.dirname(os.path.realpath(path))
    roots = [top] + [os.path.realpath(p) for p in include_paths or () if p]
    if codec_directory:
        if not os.path.isdir(codec_directory):
            raise CodecYamlError(f"codec_directory '{codec_directory}' is not a directory")
        roots.append(os.path.realpath(codec_directory))
    return _Reader(roots, allow_env_substitution, codec_directory).load(path)
