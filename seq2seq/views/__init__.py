"""What a person looks at, drawn from AttentionMaps (weights + labels): here the HTML attention explorer."""
