"""The built-in prompt templates (one Jinja2 file each); a package only so the wheel ships them as evalyard.prompts."""
