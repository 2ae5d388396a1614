"""`tuneadvisor watch`: live sampling of a training job, recording, and live findings."""
