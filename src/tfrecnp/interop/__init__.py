"""The Example world mapped to the types of other tools: Arrow (and its missing values),
Hugging Face datasets, TFDS's features.json, TFX schemas and tf.io feature specs. Each
module turns their descriptions and columns into specs and columns, and back."""
